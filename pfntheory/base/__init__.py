"""Foundations every module may use: the input validators (:mod:`._checks`, stated size
limits) and the statistics helpers (:mod:`.stats`: EPS, mean and standard error,
t-intervals, slopes)."""
