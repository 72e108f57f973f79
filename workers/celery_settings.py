"""What the control worker's Celery app needs of the broker, in one place; no Django here (compute workers hold no broker).

A message is acknowledged only after its task finished (``task_acks_late``), a worker takes one
message at a time (``worker_prefetch_multiplier = 1``), and a message whose worker died is handed to
another worker (``task_reject_on_worker_lost``).  Tasks are safe to run twice because every service
claims its submission with a conditional update first.
"""

from __future__ import annotations

from typing import Any

SHARED: dict[str, Any] = {
    "broker_connection_retry_on_startup": True,
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
    "worker_prefetch_multiplier": 1,
    "task_ignore_result": True,
    # Redis redelivers an unacknowledged message after this long; longer than any run.  A finish
    # whose control worker died waits here unread: the reaper resumes its scoring from the kept
    # result within a minute, and the late delivery then finds nothing to do.
    "broker_transport_options": {"visibility_timeout": 6 * 3600},
    "worker_hijack_root_logger": False,
}
