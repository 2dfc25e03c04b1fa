"""End-to-end pipelines over every layer below: the case studies (:mod:`.casestudy_run`,
its stages :mod:`.casestudy_predict` and :mod:`.casestudy_results`) and building the report:
executing the notebooks, exporting their pages, retraining (:mod:`.report_run`)."""
