"""What notebooks show: plots (draw on a given axes) and widgets (players, live memory)."""
