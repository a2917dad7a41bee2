#pragma once
// The known-bad adapters: deliberately broken locks that the suite must catch (calibration).
// They are their own library, outside the production adapters; the `lockstep` command registers
// them so they are selectable by name like any other adapter.
namespace lockstep {

// Registers every known-bad adapter this build has. Idempotent.
void register_known_bad_adapters();

}  // namespace lockstep
