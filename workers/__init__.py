"""Evaluation workers.

Two kinds, which share nothing: they meet only in the platform's database, through the web app.

* the **control worker** (``workers.celery_app``, Django, the database, the gold): scores
  prediction files, finishes runs handed back by compute workers, reaps lost runs;
* **compute workers** (``workers.compute``, no Celery, no broker, no Django, no database, no gold):
  claim runs, run submitted systems in the sandbox and talk to the platform over its internal API only.

Django is set up by the control side's modules that need it (``workers.celery_app``), never here:
a compute worker imports this package too.
"""
