"""Every way a job is inserted writes its labels."""
