"""Secrets kept out of commands' environments, out of localhand's own process, and out of text."""
