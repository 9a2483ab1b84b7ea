"""The WSGI application gunicorn serves (``gunicorn production.wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "production.settings")
application = get_wsgi_application()
