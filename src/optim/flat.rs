//! Parameters, gradients and optimizer state kept flat on the GPU, so that one dispatch
//! updates many parameters (Adam over nanochar's 76 parameters was 76 dispatches). Each
//! parameter becomes a view at an aligned offset of its group's buffer, keeping its identity;
//! a group holds as many parameters as fit in the largest buffer the device binds.

use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Storage, Tensor};
use crate::Device;
use std::rc::Rc;

/// Parameters sharing one buffer, with their gradients and state in buffers of the same
/// layout. The gaps between members stay zero in every buffer, so the update leaves them be.
pub(crate) struct Group {
    /// Whether weight decay applies to this group's members (all or none of them do).
    pub decays: bool,
    /// (index into the parameter list, where its gradient starts in `grads`, in elements).
    grad_places: Vec<(usize, usize)>,
    pub params: Tensor,
    pub grads: Tensor,
    pub state: Vec<Tensor>,
}

/// The groups of one model's parameters.
pub(crate) struct Flat {
    pub groups: Vec<Group>,
}

impl Flat {
    /// Moves the parameters into groups, those that `decays` apart from the others, and gives
    /// each group `slots` zeroed state tensors; returns the groups and, per parameter, views of
    /// its state.
    pub fn new(
        gpu: &Rc<Gpu>,
        params: &[(String, Tensor)],
        slots: usize,
        decays: impl Fn(&Tensor) -> bool,
    ) -> Result<(Flat, Vec<Vec<Tensor>>)> {
        let device = Device::Gpu(gpu.clone());
        // Every member starts where a binding may start, and on a whole vec4 (kernels read
        // vec4s from the start of a binding).
        let align = (gpu.limits().min_storage_buffer_offset_alignment as usize / 4).max(4);
        let most = gpu.largest_buffer() as usize / 4;
        let mut groups = Vec::new();
        let mut state_views = Vec::with_capacity(params.len());
        let kinds = [true, false].map(|d| {
            let members = (0..params.len()).filter(|&i| decays(&params[i].1) == d);
            (d, members.collect::<Vec<_>>())
        });
        let laid_out = kinds.into_iter().flat_map(|(d, members)| {
            let layouts = layouts(params, &members, align, most);
            layouts.into_iter().map(move |l| (d, l))
        });
        for (decays, layout) in laid_out {
            let len = layout.iter().map(|&(i, at)| at + params[i].1.numel()).max();
            let len = len.unwrap_or(0).max(1);
            let mut group = Group {
                decays,
                params: Tensor::zeros(&[len], &device)?,
                grads: Tensor::zeros(&[len], &device)?,
                state: (0..slots)
                    .map(|_| Tensor::zeros(&[len], &device))
                    .collect::<Result<_>>()?,
                grad_places: Vec::with_capacity(layout.len()),
            };
            for (i, at) in layout {
                let p = &params[i].1;
                group.params.part(at, p.shape()).copy_from(p)?;
                p.set_storage(Storage::View {
                    whole: group.params.clone(),
                    offset: at,
                });
                let views = group.state.iter().map(|s| s.part(at, p.shape())).collect();
                state_views.push((i, views));
                group.grad_places.push((i, at));
            }
            groups.push(group);
        }
        state_views.sort_by_key(|(i, _)| *i);
        Ok((
            Flat { groups },
            state_views.into_iter().map(|(_, v)| v).collect(),
        ))
    }

    /// Copies each parameter's gradient into its place in its group's gradient buffer (the
    /// caller has checked that each has its parameter's shape).
    pub fn gather(&self, gpu: &Gpu, grads: &[Tensor]) -> Result<()> {
        for group in &self.groups {
            let pieces: Vec<(usize, &Tensor)> = group
                .grad_places
                .iter()
                .map(|&(i, at)| (at, &grads[i]))
                .collect();
            super::gather::gather(gpu, &group.grads, &pieces)?;
        }
        Ok(())
    }
}

/// Per group, (parameter index, offset): the `members` of `params` in order, each at the next
/// multiple of `align` elements, a new group when the next would pass `most` elements.
fn layouts(
    params: &[(String, Tensor)],
    members: &[usize],
    align: usize,
    most: usize,
) -> Vec<Vec<(usize, usize)>> {
    let mut groups = vec![Vec::new()];
    let mut end = 0usize;
    for &i in members {
        let p = &params[i].1;
        let mut at = end.next_multiple_of(align);
        if at + p.numel() > most && at > 0 {
            groups.push(Vec::new());
            at = 0;
        }
        groups.last_mut().expect("one group at least").push((i, at));
        end = at + p.numel();
    }
    groups.retain(|g| !g.is_empty());
    groups
}

#[cfg(test)]
mod tests {
    use super::layouts;
    use crate::{Device, Tensor};

    #[test]
    fn members_are_aligned_and_groups_stay_within_the_limit() {
        let p = |n: usize| (String::new(), Tensor::zeros(&[n], &Device::Cpu).unwrap());
        let params = [p(100), p(64), p(1), p(300), p(50)];
        let all = [0, 1, 2, 3, 4];
        assert_eq!(
            layouts(&params, &all, 64, 1000),
            vec![vec![(0, 0), (1, 128), (2, 192), (3, 256), (4, 576)]]
        );
        // 256 + 300 passes 500: the fourth parameter opens a second group.
        assert_eq!(
            layouts(&params, &all, 64, 500),
            vec![vec![(0, 0), (1, 128), (2, 192)], vec![(3, 0), (4, 320)]]
        );
        // Members only, in their order.
        assert_eq!(
            layouts(&params, &[1, 4], 64, 1000),
            vec![vec![(1, 0), (4, 64)]]
        );
    }
}
