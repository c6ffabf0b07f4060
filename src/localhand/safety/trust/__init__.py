"""Trust in the files that steer localhand, given by the user once for exact content."""
