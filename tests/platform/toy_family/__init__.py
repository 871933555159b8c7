"""A toy family registered through the family contract alone (`VERILEARN_FAMILIES`)."""
