"""One filtered, keyset-paginated page of a job list, and the whole set it was cut from."""

from __future__ import annotations

import dataclasses

from django.db.models import QuerySet
from django.http import QueryDict
from django.utils.translation import gettext as _

from . import adapter, masking
from .filters import JobFilter
from .keyset import PAGE_AFTER, PAGE_BEFORE, PAGE_PARAMS, Keyset, Page
from .label_filter import ANY, LABEL, LABEL_MODE, without_idle_mode
from .listings import Listing

PAGE_SIZE = 50
# An argument search reads at most this many rows of the filtered list per request.
SEARCH_WINDOW = 5_000

__all__ = ["PAGE_AFTER", "PAGE_BEFORE", "PAGE_PARAMS", "JobList"]


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
        after = self.params.get(PAGE_AFTER)
        if not self.searching:
            return keyset.page(after=after, before=self.params.get(PAGE_BEFORE))
        matches = self.filterset.qs.filter(self.filterset.argument_query)
        if any("__" in term for term in self.listing.ordering):
            # Ordered by an execution table: bound the search by the window's job ids.
            window, end = keyset.window(after, SEARCH_WINDOW)
            matches = matches.filter(pk__in=window)
        else:
            end = keyset.window_end(after, SEARCH_WINDOW)
            if end is not None:
                matches = matches.filter(keyset.up_to(end))
        page = Keyset(matches, self.listing.ordering, PAGE_SIZE).page(after=after)
        if page.next_cursor is None and end is not None:
            page = dataclasses.replace(page, search_cursor=end)
        return dataclasses.replace(page, previous_cursor=None)

    @property
    def filter_params(self) -> list[tuple[str, str]]:
        """The known filters' values, and nothing else, for forms that act on this list.

        Each label is one ``label`` pair, so a confirmation step and "all matching" carry
        exactly the labels (and their mode) that the list was filtered by.
        """
        return without_idle_mode(
            [
                (name, value)
                for name in self.filterset.filters
                for value in self.params.getlist(name)
                # The empty box for one more label is sent with every search: not a label.
                if (value.strip() if name == LABEL else value)
            ]
        )

    @property
    def description(self) -> str:
        """The valid filters in words, as in "Queue=default, Task=charge_card"."""
        if not self.filterset.is_bound:
            return ""
        self.filterset.is_valid()
        form = self.filterset.form
        values = self.filterset.active_values()
        return ", ".join(
            f"{form.fields[name].label}={self._described(name, value, values)}"
            for name, value in values.items()
            if name != LABEL_MODE
        )

    @staticmethod
    def _described(name: str, value, values: dict) -> str:
        if name == "args":
            # A search on a masked keyword is described without its value (audit log).
            return masking.mask_search(value)
        if name == LABEL:
            # Quoted, so that a label holding a comma still reads as one label.
            quoted = ", ".join(f'"{label}"' for label in value)
            if len(value) == 1:
                return quoted
            mode = _("any of") if values.get(LABEL_MODE) == ANY else _("all of")
            return f"{mode} {quoted}"
        return str(value)

    @property
    def valid(self) -> bool:
        """Whether every filter given is valid (an invalid one would be ignored, widening)."""
        return not self.filterset.is_bound or self.filterset.is_valid()

    def matching(self) -> QuerySet:
        """Every job matching the filters (argument search in full), for bulk actions."""
        queryset = self.filterset.qs.order_by().select_related(None)
        search = self.filterset.argument_query
        return queryset.filter(search) if search is not None else queryset
