"""Prompt templates with named slots, one module per method, each citing its paper.

Empty until the first LLM-backed method lands: see the project's issues.
"""
