"""Composable nnsight interventions on vision-language models."""
