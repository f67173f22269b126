"""Context telemetry: token accounting, policy and risk, status report, statusline.

Kept import-free: the statusline imports ``telemetry.statusline`` and must not pay for pydantic.
"""
