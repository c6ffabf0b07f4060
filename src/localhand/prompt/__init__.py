"""What the model is sent: system prompt, the project's instructions, attached files, the tools
as text, keeping the window.
"""
