"""Which commands need a person's yes, who gives it, and what a yes covers."""
