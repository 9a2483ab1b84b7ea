"""An app declaring recurring tasks, installed only in the scheduler process tests.

Its ``tasks`` module is found by the scheduler's autodiscovery, as a project's would be.
"""
