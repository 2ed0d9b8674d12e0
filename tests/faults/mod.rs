//! The faults a class box meets (issue 30): a full disk, a read-only or removed database
//! file (`disk_full`), and a backup taken while the class runs (`backup`).

mod backup;
mod disk_full;
