"""The subcommands on trained runs (``train``, ``evaluate``, ``compare``) and the checked option
types every subcommand shares (:mod:`.options`); the entry point is :mod:`pfntheory.cli`."""
