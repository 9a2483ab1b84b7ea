"""One filtered, keyset-paginated page of a job list, and the whole set it was cut from."""

from __future__ import annotations

import dataclasses

from django.db.models import QuerySet
from django.http import QueryDict

from . import adapter
from .filters import JobFilter
from .keyset import Keyset, Page
from .listings import Listing

PAGE_SIZE = 50
# An argument search reads at most this many rows of the filtered list per request.
SEARCH_WINDOW = 5_000


class JobList:
    def __init__(self, listing: Listing, params: QueryDict):
        self.listing = listing
        self.params = params
        self.filterset = JobFilter(params or None, queryset=adapter.jobs(listing), listing=listing)

    @property
    def search_window(self) -> int:
        return SEARCH_WINDOW

    @property
    def searching(self) -> bool:
        return self.filterset.argument_query is not None

    def page(self) -> Page:
        """Return the requested page; an argument search reads a bounded window of rows."""
        keyset = Keyset(self.filterset.qs, self.listing.ordering, PAGE_SIZE)
        after = self.params.get("after")
        if not self.searching:
            return keyset.page(after=after, before=self.params.get("before"))
        end = keyset.window_end(after, SEARCH_WINDOW)
        matches = self.filterset.qs.filter(self.filterset.argument_query)
        if end is not None:
            matches = matches.filter(keyset.up_to(end))
        page = Keyset(matches, self.listing.ordering, PAGE_SIZE).page(after=after)
        if page.next_cursor is None and end is not None:
            page = dataclasses.replace(page, search_cursor=end)
        return dataclasses.replace(page, previous_cursor=None)

    def matching(self) -> QuerySet:
        """Every job matching the filters (argument search in full), for bulk actions."""
        queryset = self.filterset.qs.order_by().select_related(None)
        search = self.filterset.argument_query
        return queryset.filter(search) if search is not None else queryset
