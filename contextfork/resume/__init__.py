"""Resume a handoff package: drift report, exact re-application, the brief, consumed state."""
