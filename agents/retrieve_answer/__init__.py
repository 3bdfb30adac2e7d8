"""Answering with a single-step method: retrieve once, then the shared citing reader."""
