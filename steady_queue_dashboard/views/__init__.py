"""The dashboard's views: one small function per page or action."""
