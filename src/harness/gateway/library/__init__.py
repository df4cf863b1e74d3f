"""What the gateway serves from the operator's folders: skills (``[mcp] skill_paths``) and
side-loaded prompts (``[mcp] prompt_paths``)."""
