"""Rendering for the command line: live progress, `show`, the approval view, pictures."""
