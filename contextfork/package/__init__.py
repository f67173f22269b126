"""The verifiable handoff package (IPSF-1.2 "Summarize & Fork"): export, validate, store."""
