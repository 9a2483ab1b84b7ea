"""The demo site's settings, URLs and WSGI entry point for a container (deploy/docker)."""
