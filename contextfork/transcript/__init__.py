"""Transcript adapters: real harness transcripts → one normalized ``Session`` model."""
