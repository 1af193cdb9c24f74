"""The tracked base and its sensing: tread drive, odometry, lidars, scan merging, head camera."""
