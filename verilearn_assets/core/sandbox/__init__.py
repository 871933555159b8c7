"""Sandbox: run untrusted analysis code fast, in isolation, and survive faults."""
