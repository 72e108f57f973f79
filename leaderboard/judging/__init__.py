"""Human evaluation rounds (Yang et al. 2018, section 4): systems' answers judged blind by invited judges.

``models`` (a round, its systems, items and merged candidates, judges, assignments, judgments and
adjudications), ``services`` (the writes), ``selectors`` (the reads: what a judge sees next, progress,
agreement, the export ``python -m scoring metaeval`` reads), ``items`` (a question's text, evidence and
references from the dataset's files) and ``answers`` (what each system answered).
"""
