"""Dynamic Resource Allocation: the devices NVIDIA's DRA driver publishes, CEL selectors, their proof."""
