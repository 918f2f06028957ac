"""Static memory planning: every activation gets a fixed offset in one arena."""
from .arena import ArenaPlan, plan_arena

__all__ = ["ArenaPlan", "plan_arena"]
