//! Voxel terrain.
