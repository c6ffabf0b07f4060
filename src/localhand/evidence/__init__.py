"""What shows that a run did its task: checks, the check guard, change tracking."""
