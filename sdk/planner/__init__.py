"""Static memory planning: every activation gets a fixed offset in one arena."""
from .arena import ArenaPlan, Sharing, plan_arena

__all__ = ["ArenaPlan", "Sharing", "plan_arena"]
