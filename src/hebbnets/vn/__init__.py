"""Vector Networks (filled in below)."""
