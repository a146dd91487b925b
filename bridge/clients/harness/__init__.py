"""A bridge client built on the wire contract alone: connect, stream inputs, validate frames, report."""
