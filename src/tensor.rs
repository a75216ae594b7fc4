//! The Tensor handle: a cheap `Rc` to shape, storage (a pooled GPU buffer or a CPU vector) and
//! the op that made it.

use crate::autograd::{self, Backward, Op};
use crate::error::{Error, Result};
use crate::gpu::{BufferRef, Gpu, PooledBuffer};
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

mod half;
mod history;
mod transfer;

use history::History;

/// Element type. Floats are f32 on the GPU; the CPU backend keeps them in f64, which makes it
/// an exact reference for tests and finite differences. F16 holds frozen weights and some
/// activations of f16 runs in half the memory (src/tensor/half.rs): read by products, never
/// trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
    U32,
    F16,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::U32 => "u32",
            DType::F16 => "f16",
        }
    }

    /// The bytes one element takes on the GPU.
    pub(crate) fn element_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 => 2,
        }
    }

    /// The bytes `n` elements take on the GPU: f16s in whole groups of 4 (so that a kernel may
    /// read the last 4 halves as one 8-byte vec2<u32>).
    pub(crate) fn bytes(self, n: usize) -> u64 {
        let n = match self {
            DType::F32 | DType::U32 => n,
            DType::F16 => n.next_multiple_of(4),
        };
        (n * self.element_bytes()) as u64
    }
}

/// Where a tensor lives and where its ops run.
#[derive(Clone)]
pub enum Device {
    Cpu,
    Gpu(Rc<Gpu>),
}

impl Device {
    pub fn is_gpu(&self) -> bool {
        matches!(self, Device::Gpu(_))
    }

    /// Same device (the same GPU context, or both CPU).
    pub fn same(&self, other: &Device) -> bool {
        match (self, other) {
            (Device::Cpu, Device::Cpu) => true,
            (Device::Gpu(a), Device::Gpu(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// A short description: the adapter's name, or "CPU".
    pub fn name(&self) -> String {
        match self {
            Device::Cpu => "CPU".into(),
            Device::Gpu(g) => g.adapter_name(),
        }
    }

    /// On a GPU, destroys the buffers its pool keeps free (`Gpu::release_free_buffers`); on
    /// the CPU, nothing.
    pub fn release_free_buffers(&self) {
        if let Device::Gpu(gpu) = self {
            gpu.release_free_buffers();
        }
    }
}

/// Element data held on the CPU.
#[derive(Clone, Debug)]
pub(crate) enum Host {
    F(Vec<f64>),
    U(Vec<u32>),
}

pub(crate) enum Storage {
    Host(Host),
    Gpu(PooledBuffer),
    /// Elements of a larger GPU tensor from `offset` on (the optimizer keeps all parameters
    /// in one buffer, so that one dispatch updates them all).
    View {
        whole: Tensor,
        offset: usize,
    },
    Freed,
}

struct Node {
    id: u64,
    shape: Vec<usize>,
    dtype: DType,
    device: Device,
    storage: Rc<RefCell<Storage>>,
    history: RefCell<History>,
    requires_grad: bool,
}

/// A tensor: shape, data on a device, and (when it needs a gradient) the op that made it.
#[derive(Clone)]
pub struct Tensor(Rc<Node>);

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Number of elements of a shape.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl Tensor {
    fn make(
        shape: Vec<usize>,
        dtype: DType,
        device: Device,
        storage: Rc<RefCell<Storage>>,
        op: Option<Op>,
        requires_grad: bool,
    ) -> Tensor {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Tensor(Rc::new(Node {
            id,
            shape,
            dtype,
            device,
            storage,
            history: RefCell::new(op.map_or(History::Untracked, History::Made)),
            requires_grad,
        }))
    }

    /// The result of an op: records `op` for backward when gradients are on and any input
    /// needs one, and drops it (with what it saved) otherwise.
    pub(crate) fn from_op(
        shape: Vec<usize>,
        dtype: DType,
        device: &Device,
        storage: Storage,
        op: impl Backward + 'static,
    ) -> Tensor {
        let needs = autograd::is_enabled() && op.inputs().iter().any(|t| t.requires_grad());
        let op = needs.then(|| Rc::new(op) as Op);
        Tensor::make(
            shape,
            dtype,
            device.clone(),
            Rc::new(RefCell::new(storage)),
            op,
            needs,
        )
    }

    /// The data of `inner` (computed by other ops without recording them) presented as the
    /// result of `op`, so that backward sees one op with its own rule.
    pub(crate) fn adopt(inner: &Tensor, op: impl Backward + 'static) -> Tensor {
        let needs = autograd::is_enabled() && op.inputs().iter().any(|t| t.requires_grad());
        let op = needs.then(|| Rc::new(op) as Op);
        Tensor::make(
            inner.shape().to_vec(),
            inner.dtype(),
            inner.device().clone(),
            inner.0.storage.clone(),
            op,
            needs,
        )
    }

    /// A tensor from raw storage, with no history.
    pub(crate) fn from_storage(
        shape: Vec<usize>,
        dtype: DType,
        device: &Device,
        storage: Storage,
    ) -> Tensor {
        Tensor::make(
            shape,
            dtype,
            device.clone(),
            Rc::new(RefCell::new(storage)),
            None,
            false,
        )
    }

    /// An f32 tensor from `data` on `device`.
    pub fn from_vec(data: Vec<f32>, shape: &[usize], device: &Device) -> Result<Tensor> {
        check_len("from_vec", data.len(), shape)?;
        let storage = match device {
            Device::Cpu => Storage::Host(Host::F(data.iter().map(|&v| v as f64).collect())),
            Device::Gpu(g) => upload(g, bytemuck::cast_slice(&data))?,
        };
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::F32,
            device,
            storage,
        ))
    }

    /// A u32 tensor (indices, labels) from `data` on `device`.
    pub fn from_u32(data: Vec<u32>, shape: &[usize], device: &Device) -> Result<Tensor> {
        check_len("from_u32", data.len(), shape)?;
        let storage = match device {
            Device::Cpu => Storage::Host(Host::U(data)),
            Device::Gpu(g) => upload(g, bytemuck::cast_slice(&data))?,
        };
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::U32,
            device,
            storage,
        ))
    }

    /// An f32 tensor from f64 data: exact on the CPU, rounded to f32 on the GPU.
    pub fn from_f64(data: Vec<f64>, shape: &[usize], device: &Device) -> Result<Tensor> {
        check_len("from_f64", data.len(), shape)?;
        match device {
            Device::Cpu => Ok(Tensor::from_storage(
                shape.to_vec(),
                DType::F32,
                device,
                Storage::Host(Host::F(data)),
            )),
            Device::Gpu(_) => {
                Tensor::from_vec(data.iter().map(|&v| v as f32).collect(), shape, device)
            }
        }
    }

    /// A tensor of `shape` filled with `value`; on the GPU by a dispatch, not an upload.
    pub fn full(shape: &[usize], value: f32, device: &Device) -> Result<Tensor> {
        crate::ops::filled(device, shape, value)
    }

    /// A tensor of zeros.
    pub fn zeros(shape: &[usize], device: &Device) -> Result<Tensor> {
        Tensor::full(shape, 0.0, device)
    }

    /// The same data marked as needing a gradient (a leaf of the graph).
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad
    }

    /// A leaf sharing this data that needs a gradient.
    pub fn with_grad(&self) -> Tensor {
        Tensor::make(
            self.shape().to_vec(),
            self.dtype(),
            self.device().clone(),
            self.0.storage.clone(),
            None,
            true,
        )
    }

    /// The same data without history: gradients stop here.
    pub fn detach(&self) -> Tensor {
        Tensor::make(
            self.shape().to_vec(),
            self.dtype(),
            self.device().clone(),
            self.0.storage.clone(),
            None,
            false,
        )
    }

    /// The same data seen with another shape of the same size: no copy (tensors are contiguous).
    pub(crate) fn view(&self, shape: &[usize], op: Option<impl Backward + 'static>) -> Tensor {
        let needs = op.is_some() && autograd::is_enabled() && self.requires_grad();
        let op = op.filter(|_| needs).map(|op| Rc::new(op) as Op);
        Tensor::make(
            shape.to_vec(),
            self.dtype(),
            self.device().clone(),
            self.0.storage.clone(),
            op,
            needs,
        )
    }

    /// A unique id, stable for the life of the tensor.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }
    pub fn rank(&self) -> usize {
        self.0.shape.len()
    }
    pub fn numel(&self) -> usize {
        numel(&self.0.shape)
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn device(&self) -> &Device {
        &self.0.device
    }
    /// Replaces the data behind this tensor and every tensor sharing it (the optimizer moves
    /// parameters into its flat buffers this way, keeping their identity).
    pub(crate) fn set_storage(&self, storage: Storage) {
        *self.0.storage.borrow_mut() = storage;
    }

    /// The tensor this one is a view of (see `part`) and where it starts in it, if it is one.
    pub(crate) fn view_of(&self) -> Option<(Tensor, usize)> {
        match &*self.0.storage.borrow() {
            Storage::View { whole, offset } => Some((whole.clone(), *offset)),
            _ => None,
        }
    }

    /// A tensor of `shape` over this GPU tensor's elements from `offset` on, sharing them.
    pub(crate) fn part(&self, offset: usize, shape: &[usize]) -> Tensor {
        let storage = Storage::View {
            whole: self.clone(),
            offset,
        };
        Tensor::from_storage(shape.to_vec(), self.dtype(), self.device(), storage)
    }

    /// Releases the data now (the GPU buffer goes back to the pool); later reads are errors.
    pub fn free(&self) {
        *self.0.storage.borrow_mut() = Storage::Freed;
    }

    /// What tells this tensor's storage apart: equal for a tensor and its reshapes, which
    /// share it, while either lives.
    pub(crate) fn storage_id(&self) -> *const RefCell<Storage> {
        Rc::as_ptr(&self.0.storage)
    }

    /// The GPU buffer behind this tensor (a cheap handle), to bind to a kernel; `op` names the
    /// caller in the error for a tensor that is not on the GPU.
    pub fn buffer(&self, op: &'static str) -> Result<BufferRef> {
        match &*self.0.storage.borrow() {
            Storage::Gpu(b) => Ok(b.handle().clone()),
            // Bound up to the next vec4 (kernels may read vec4s whole), and never empty: a
            // binding of size 0 would mean the rest of the buffer.
            Storage::View { whole, offset } => Ok(whole.buffer(op)?.part(
                self.dtype().bytes(*offset),
                self.dtype().bytes(self.numel().div_ceil(4).max(1) * 4),
            )),
            Storage::Freed => Err(Error::Freed(op)),
            Storage::Host(_) => Err(Error::DeviceMismatch(op)),
        }
    }

    /// The CPU data of an f32 tensor (or an f16 one's, its values f16's), in f64.
    pub(crate) fn host_f64(&self, op: &'static str) -> Result<Vec<f64>> {
        match &*self.0.storage.borrow() {
            Storage::Host(Host::F(v)) => Ok(v.clone()),
            other => Err(not_host(other, op, DType::F32)),
        }
    }

    /// The CPU data of a u32 tensor.
    pub(crate) fn host_u32(&self, op: &'static str) -> Result<Vec<u32>> {
        match &*self.0.storage.borrow() {
            Storage::Host(Host::U(v)) => Ok(v.clone()),
            other => Err(not_host(other, op, DType::U32)),
        }
    }

    /// Changes the CPU data of an f32 tensor in place (optimizer updates on the CPU backend).
    pub(crate) fn update_host(&self, op: &'static str, f: impl FnOnce(&mut [f64])) -> Result<()> {
        match &mut *self.0.storage.borrow_mut() {
            Storage::Host(Host::F(v)) => {
                f(v);
                Ok(())
            }
            other => Err(not_host(other, op, DType::F32)),
        }
    }

    /// Checks that this tensor holds floats: f32, or f16 (src/tensor/half.rs), which the
    /// products' operands, the embedding's table and reads back may be.
    pub(crate) fn expect_float(&self, op: &'static str) -> Result<()> {
        match self.dtype() {
            DType::F16 => Ok(()),
            _ => self.expect_dtype(op, DType::F32),
        }
    }

    pub(crate) fn expect_dtype(&self, op: &'static str, dtype: DType) -> Result<()> {
        if self.dtype() == dtype {
            Ok(())
        } else {
            Err(Error::DType {
                op,
                expected: dtype.name(),
                got: self.dtype().name(),
            })
        }
    }

    /// Checks that `other` lives on this tensor's device.
    pub(crate) fn same_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.device().same(other.device()) {
            Ok(())
        } else {
            Err(Error::DeviceMismatch(op))
        }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(#{} {:?} {} on {})",
            self.id(),
            self.shape(),
            self.dtype().name(),
            self.device().name()
        )
    }
}

/// Why `storage` is not CPU data of `expected` type.
fn not_host(storage: &Storage, op: &'static str, expected: DType) -> Error {
    match storage {
        Storage::Freed => Error::Freed(op),
        Storage::Gpu(_) | Storage::View { .. } => Error::DeviceMismatch(op),
        Storage::Host(h) => {
            let got = if matches!(h, Host::F(_)) {
                DType::F32
            } else {
                DType::U32
            };
            Error::DType {
                op,
                expected: expected.name(),
                got: got.name(),
            }
        }
    }
}

fn check_len(op: &'static str, len: usize, shape: &[usize]) -> Result<()> {
    if len == numel(shape) {
        Ok(())
    } else {
        Err(Error::Invalid {
            op,
            why: format!("{len} values cannot fill shape {shape:?}"),
        })
    }
}

fn upload(gpu: &Rc<Gpu>, bytes: &[u8]) -> Result<Storage> {
    let buffer = gpu.alloc(bytes.len() as u64, true)?;
    if !bytes.is_empty() {
        gpu.queue.write_buffer(buffer.buffer(), 0, bytes);
    }
    Ok(Storage::Gpu(buffer))
}

/// A fresh GPU buffer for an op's output of `len` 4-byte elements.
pub(crate) fn gpu_output(gpu: &Rc<Gpu>, len: usize) -> Result<PooledBuffer> {
    gpu.alloc(len as u64 * 4, false)
}

/// A buffer of `len` f32s that no kernel binds whole (a table read in windows, filled by a
/// clear or an upload): it may be larger than a binding.
pub(crate) fn gpu_table(gpu: &Rc<Gpu>, len: usize) -> Result<PooledBuffer> {
    gpu.alloc(len as u64 * 4, true)
}
