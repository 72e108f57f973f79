"""The organizer console: a challenge run from the site by its organizers.

An installed app without models (``AuditEntry``, ``Announcement`` and ``TeamPhaseOverride`` are the
challenges app's), so that its admin (the audited reveal) and its template tag (``standing``) live
with it: ``selectors`` reads, ``services`` writes, ``actions`` lists what an organizer
can do with the confirmation each needs, and ``views`` (pages) and ``apis`` (the same for scripts)
are thin.  Every request starts with ``challenges.selectors.challenge_get_organized``: the role is
per challenge (``Challenge.staff``, and site administrators), and anyone else gets a 404.
"""
