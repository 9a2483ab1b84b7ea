"""``Job.objects.labelled(all=..., any=...)``."""
