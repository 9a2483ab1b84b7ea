"""The WSGI application Gunicorn serves in tests/embedded/test_gunicorn.py."""

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
