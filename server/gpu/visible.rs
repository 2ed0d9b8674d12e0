//! Which GPU `gpulab worker --gpu N` runs on. A scheduler (Slurm, Kubernetes' device
//! plugin, a `docker run --gpus`) often hands a process its GPUs as a
//! `CUDA_VISIBLE_DEVICES` mask already — `3`, `2,5` or a list of `MIG-…` UUIDs — and CUDA
//! then numbers only those from 0. Overwriting the mask with `N` would put the worker on
//! the machine's GPU N, someone else's; so `--gpu N` picks the N-th entry of the mask
//! it was given, and sets one only when there is none. Then N counts in PCI-bus order
//! (`CUDA_DEVICE_ORDER=PCI_BUS_ID`, nvidia-smi's order) instead of CUDA's default
//! fastest-first order, unless the order was already chosen.
//!
//! The rule is [`choose`], a pure function of the environment; [`apply`] writes the
//! result before anything loads the driver (CUDA reads both variables once, in
//! `cuInit`: CUDA Programming Guide, "CUDA Environment Variables").

/// What to put in the environment for the chosen GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The new `CUDA_VISIBLE_DEVICES`: one entry, the chosen GPU.
    pub visible_devices: String,
    /// `CUDA_DEVICE_ORDER` to set, when it must be set.
    pub device_order: Option<&'static str>,
    /// One line for the log: which GPU and why.
    pub explanation: String,
}

/// The GPU for `--gpu gpu`, given the `CUDA_VISIBLE_DEVICES` (`mask`) and
/// `CUDA_DEVICE_ORDER` (`order`) the process was started with. An index past the end of
/// the mask, or an empty mask (no GPU granted), is an error that says so.
pub fn choose(mask: Option<&str>, order: Option<&str>, gpu: u32) -> Result<Selection, String> {
    let Some(mask) = mask else {
        let order_set = order.is_some_and(|o| !o.trim().is_empty());
        return Ok(Selection {
            visible_devices: gpu.to_string(),
            device_order: (!order_set).then_some("PCI_BUS_ID"),
            explanation: format!(
                "GPU {gpu} in {} order (CUDA_VISIBLE_DEVICES was not set)",
                if order_set {
                    order.unwrap_or_default().trim()
                } else {
                    "PCI bus (nvidia-smi's)"
                }
            ),
        });
    };
    // CUDA stops reading the list at the first entry it cannot parse, so an empty entry
    // ends it too.
    let entries: Vec<&str> = mask
        .split(',')
        .map(str::trim)
        .take_while(|e| !e.is_empty())
        .collect();
    if entries.is_empty() {
        return Err(format!(
            "CUDA_VISIBLE_DEVICES is {mask:?}: this process was given no GPU, so --gpu {gpu} has none to choose (unset it to use the machine's GPUs)"
        ));
    }
    let Some(entry) = usize::try_from(gpu).ok().and_then(|i| entries.get(i)) else {
        return Err(format!(
            "--gpu {gpu}, but CUDA_VISIBLE_DEVICES={mask} grants this process {} GPU(s): --gpu counts within that list, from 0 to {}",
            entries.len(),
            entries.len() - 1
        ));
    };
    Ok(Selection {
        visible_devices: (*entry).to_string(),
        device_order: None,
        explanation: format!(
            "GPU {entry}, entry {gpu} of the CUDA_VISIBLE_DEVICES={mask} this process was given"
        ),
    })
}

/// Narrows this process to GPU `gpu` ([`choose`] on the current environment) and
/// returns the log line, or the reason it cannot.
pub fn apply(gpu: u32) -> Result<String, String> {
    let mask = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let order = std::env::var("CUDA_DEVICE_ORDER").ok();
    let selection = choose(mask.as_deref(), order.as_deref(), gpu)?;
    // SAFETY: called by `main` before any other thread exists and before the CUDA
    // driver is loaded, so no one reads the environment concurrently.
    unsafe {
        std::env::set_var("CUDA_VISIBLE_DEVICES", &selection.visible_devices);
        if let Some(order) = selection.device_order {
            std::env::set_var("CUDA_DEVICE_ORDER", order);
        }
    }
    Ok(selection.explanation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granted_mask_is_narrowed_never_overwritten() {
        let s = choose(Some("3,5"), None, 1).unwrap();
        assert_eq!(s.visible_devices, "5");
        assert_eq!(
            s.device_order, None,
            "the mask's numbers keep their meaning"
        );
        assert_eq!(choose(Some("3"), None, 0).unwrap().visible_devices, "3");
        assert_eq!(
            choose(Some(" 2 , 7 "), None, 0).unwrap().visible_devices,
            "2"
        );
    }

    #[test]
    fn mig_and_gpu_uuids_are_entries_like_any_other() {
        let mask =
            "MIG-1a2b3c4d-0000-1111-2222-333344445555,MIG-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff";
        assert_eq!(
            choose(Some(mask), None, 1).unwrap().visible_devices,
            "MIG-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"
        );
        assert_eq!(
            choose(Some("GPU-3b1f00a2-5c11-4e9d-8001-deadbeef0042"), None, 0)
                .unwrap()
                .visible_devices,
            "GPU-3b1f00a2-5c11-4e9d-8001-deadbeef0042"
        );
    }

    #[test]
    fn an_index_past_the_mask_or_an_empty_mask_is_a_clear_error() {
        let e = choose(Some("3,5"), None, 2).unwrap_err();
        assert!(
            e.contains("--gpu 2") && e.contains("2 GPU(s)") && e.contains("0 to 1"),
            "{e}"
        );
        let e = choose(Some(""), None, 0).unwrap_err();
        assert!(e.contains("no GPU"), "{e}");
        // CUDA ignores everything after an empty entry.
        assert!(choose(Some("4,,6"), None, 1).is_err());
    }

    #[test]
    fn without_a_mask_n_counts_in_pci_bus_order() {
        let s = choose(None, None, 2).unwrap();
        assert_eq!(s.visible_devices, "2");
        assert_eq!(s.device_order, Some("PCI_BUS_ID"));
        let chosen = choose(None, Some("FASTEST_FIRST"), 2).unwrap();
        assert_eq!(chosen.device_order, None, "an order already chosen stays");
        assert!(chosen.explanation.contains("FASTEST_FIRST"));
    }
}
