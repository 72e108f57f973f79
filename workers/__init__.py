"""Evaluation workers.

Two kinds, which share nothing but the broker:

* the **control worker** (``workers.celery_app``, Django, the database, the gold): scores
  prediction files, finishes runs handed back by compute workers, reaps lost runs;
* **compute workers** (``workers.compute_app``, no Django, no database, no gold): run submitted
  systems in the sandbox and talk to the platform over its internal API only.

Django is set up by the control side's modules that need it (``workers.celery_app``), never here:
a compute worker imports this package too.
"""
