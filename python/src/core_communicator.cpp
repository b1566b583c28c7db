// The communicator over Python buffers (numpy arrays, array.array, memoryviews of float32).
//
// A collective's buffers must stay alive until it is done, even when Python drops the Work
// handle first, so the communicator keeps a reference to every buffer of an unfinished
// collective and lets go once its Work is ready.
//
// when_done(works, callback) runs a Python callable once the works are done, on the completion
// thread holding the GIL: the torch backend (dlcp/torch/process_group.py) completes its futures
// this way, with no thread per call and no libtorch. Never on dlcp's own threads (the transport's
// I/O thread, the collective threads): work_completer.hpp says why.
//
// allreduce_slices is the DDP communication hook's collective: one all-reduce per layer slice of
// a gradient bucket, and a Python callable run once all are done (on the communicator's
// completion thread, holding the GIL), which completes the hook's torch.futures.Future. It needs
// nothing from libtorch, so the hook runs on any torch whose Python API it uses.
#include <pybind11/stl.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core_bindings.hpp"
#include "dlcp/communicator.hpp"
#include "transport_counters.hpp"
#include "work_completer.hpp"

namespace py = pybind11;

namespace dlcp::python {
namespace {

// A float32, C-contiguous Python buffer seen as a span; names the argument when it is not one.
std::span<float> float_span(const py::buffer& buffer, bool writable, const char* what) {
  const py::buffer_info info = buffer.request(writable);
  if (info.itemsize != sizeof(float) || info.format != py::format_descriptor<float>::format()) {
    throw py::type_error(std::string(what) +
                         " must be a float32 buffer (numpy.float32), got format '" + info.format +
                         "' with " + std::to_string(info.itemsize) + "-byte items");
  }
  py::ssize_t expected_stride = sizeof(float);
  for (auto dim = info.ndim; dim-- > 0;) {
    if (info.shape[dim] > 1 && info.strides[dim] != expected_stride) {
      throw py::value_error(std::string(what) + " must be C-contiguous");
    }
    expected_stride *= info.shape[dim];
  }
  return {static_cast<float*>(info.ptr), static_cast<std::size_t>(info.size)};
}

class PyWork {
 public:
  PyWork(Work work, std::vector<py::object> buffers)
      : work_(std::move(work)), buffers_(std::move(buffers)) {}
  bool ready() const { return work_.ready(); }
  CollectiveResult wait() const {
    py::gil_scoped_release release;
    return work_.wait();
  }
  const Work& work() const { return work_; }
  const std::vector<py::object>& buffers() const { return buffers_; }

 private:
  Work work_;
  std::vector<py::object> buffers_;  // alive as long as this handle, too
};

// The works of allreduce_slices, handed to its callback once all are done.
class PyWorkList {
 public:
  PyWorkList(std::vector<Work> works, std::vector<py::object> buffers)
      : works_(std::move(works)), buffers_(std::move(buffers)) {}
  bool ready() const {
    return std::all_of(works_.begin(), works_.end(), [](const Work& w) { return w.ready(); });
  }
  // The results in slice order; raises the first failed collective's error.
  std::vector<CollectiveResult> wait() const {
    py::gil_scoped_release release;
    std::vector<CollectiveResult> results;
    for (const Work& work : works_) results.push_back(work.wait());
    return results;
  }

 private:
  std::vector<Work> works_;
  std::vector<py::object> buffers_;  // the bucket (and its residual), alive until done
};

using SliceTuple = std::tuple<std::int64_t, std::int64_t, int, double>;

class PyCommunicator {
 public:
  PyCommunicator(Store& store, int rank, int world_size, const CommunicatorOptions& options) {
    py::gil_scoped_release release;
    communicator_ = Communicator::create(store, rank, world_size, options);
  }
  ~PyCommunicator() { close(); }

  int rank() const { return live().rank(); }
  int size() const { return live().size(); }
  bool is_server() const { return live().is_server(); }

  // `error_feedback`: None, or a float32 buffer of the values' length that carries this tensor's
  // rounding error from call to call (CollectiveOptions::error_feedback).
  PyWork allreduce(const py::buffer& values, CollectiveOptions options,
                   const py::object& error_feedback) {
    const auto span = float_span(values, true, "allreduce values");
    std::vector<py::object> buffers{values};
    if (!error_feedback.is_none()) {
      options.error_feedback =
          float_span(error_feedback.cast<py::buffer>(), true, "allreduce error_feedback");
      buffers.push_back(error_feedback);
    }
    return track(live().allreduce(span, options), std::move(buffers));
  }
  PyWork broadcast(const py::buffer& values, int root, const CollectiveOptions& options) {
    const auto span = float_span(values, true, "broadcast values");
    return track(live().broadcast(span, root, options), {values});
  }
  PyWork allgather(const py::buffer& input, const py::buffer& output,
                   const CollectiveOptions& options) {
    const auto in = float_span(input, false, "allgather input");
    const auto out = float_span(output, true, "allgather output");
    return track(live().allgather(in, out, options), {input, output});
  }
  // output = this rank's shard of the reduction of every rank's input (size x len(output)
  // floats); `error_feedback` as for allreduce, over the input.
  PyWork reduce_scatter(const py::buffer& input, const py::buffer& output,
                        CollectiveOptions options, const py::object& error_feedback) {
    const auto in = float_span(input, false, "reduce_scatter input");
    const auto out = float_span(output, true, "reduce_scatter output");
    std::vector<py::object> buffers{input, output};
    if (!error_feedback.is_none()) {
      options.error_feedback =
          float_span(error_feedback.cast<py::buffer>(), true, "reduce_scatter error_feedback");
      buffers.push_back(error_feedback);
    }
    return track(live().reduce_scatter(in, out, options), std::move(buffers));
  }
  // One average/sum all-reduce per (offset, length, layer, loss budget) slice of `buffer`, with
  // `base`'s other settings; `on_done(works)` runs once all are done. Every slice is checked
  // before any is posted.
  void allreduce_slices(const py::buffer& buffer, const std::vector<SliceTuple>& slices,
                        int num_layers, const CollectiveOptions& base, py::object on_done,
                        const py::object& error_feedback) {
    const auto span = float_span(buffer, true, "allreduce_slices buffer");
    std::span<float> residual;
    if (!error_feedback.is_none()) {
      residual =
          float_span(error_feedback.cast<py::buffer>(), true, "allreduce_slices error_feedback");
      if (residual.size() != span.size()) {
        throw py::value_error("allreduce_slices error_feedback holds " +
                              std::to_string(residual.size()) + " entries for a buffer of " +
                              std::to_string(span.size()));
      }
    }
    if (slices.empty()) throw py::value_error("allreduce_slices needs at least one slice");
    if (!PyCallable_Check(on_done.ptr())) throw py::type_error("on_done must be callable");
    std::vector<CollectiveOptions> options;
    for (const auto& [offset, length, layer, budget] : slices) {
      if (offset < 0 || length <= 0 || static_cast<std::uint64_t>(offset + length) > span.size()) {
        throw py::value_error("slice [" + std::to_string(offset) + ", " +
                              std::to_string(offset + length) + ") does not fit a buffer of " +
                              std::to_string(span.size()) + " entries");
      }
      CollectiveOptions collective = base;
      collective.layer = layer;
      collective.num_layers = num_layers;
      collective.loss_budget = budget;
      if (!residual.empty()) {
        collective.error_feedback =
            residual.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
      }
      collective.validate();
      options.push_back(collective);
    }
    Communicator& communicator = live();
    std::vector<Work> works;
    for (std::size_t k = 0; k < slices.size(); ++k) {
      const auto offset = static_cast<std::size_t>(std::get<0>(slices[k]));
      const auto length = static_cast<std::size_t>(std::get<1>(slices[k]));
      works.push_back(communicator.allreduce(span.subspan(offset, length), options[k]));
    }
    run_when_done(std::move(works), {py::reinterpret_borrow<py::object>(buffer), error_feedback},
                  std::move(on_done));
  }

  // Runs `on_done(works)` once every one of `works` is done, on the completion thread with the
  // GIL held, in the order the calls were made (`works` is a WorkList: its wait() returns the
  // results or raises the first failure at once). With no works it runs after the jobs queued
  // before it. The torch backend completes its futures this way: no thread waits per call.
  void when_done(const std::vector<const PyWork*>& works, py::object on_done) {
    if (!PyCallable_Check(on_done.ptr())) throw py::type_error("on_done must be callable");
    live();
    std::vector<Work> handles;
    std::vector<py::object> buffers;
    for (const PyWork* work : works) {
      if (work == nullptr) throw py::type_error("when_done takes a list of Work");
      handles.push_back(work->work());
      buffers.insert(buffers.end(), work->buffers().begin(), work->buffers().end());
    }
    run_when_done(std::move(handles), std::move(buffers), std::move(on_done));
  }

  // Point-to-point, loss-free (Communicator::send/recv/recv_any).
  PyWork send(const py::buffer& values, int peer, std::uint32_t tag,
              const CollectiveOptions& options) {
    const auto span = float_span(values, false, "send values");
    return track(live().send(span, peer, tag, options), {values});
  }
  PyWork recv(const py::buffer& values, int peer, std::uint32_t tag,
              const CollectiveOptions& options) {
    const auto span = float_span(values, true, "recv values");
    return track(live().recv(span, peer, tag, options), {values});
  }
  PyWork recv_any(const py::buffer& values, std::uint32_t tag, const CollectiveOptions& options) {
    const auto span = float_span(values, true, "recv_any values");
    return track(live().recv_any(span, tag, options), {values});
  }

  void barrier() {
    Communicator& communicator = live();
    py::gil_scoped_release release;
    communicator.barrier();
  }
  void serve() {
    Communicator& communicator = live();
    py::gil_scoped_release release;
    communicator.serve();
  }
  py::dict counters() const { return counters_dict(live().counters()); }

  // Waits for every collective and its callback, leaves the job and releases the buffers.
  // Idempotent.
  void close() {
    if (communicator_) {
      py::gil_scoped_release release;
      if (completer_) completer_->drain();  // the callbacks take the GIL: it is released here
      communicator_.reset();
      completer_.reset();
    }
    pending_.clear();
  }

 private:
  Communicator& live() const {
    if (!communicator_) {
      throw Error(ErrorCode::kAborted, -1, "the communicator was closed");
    }
    return *communicator_;
  }
  PyWork track(Work work, std::vector<py::object> buffers) {
    std::erase_if(pending_, [](const auto& entry) { return entry.first.ready(); });
    pending_.emplace_back(work, buffers);
    return PyWork(std::move(work), std::move(buffers));
  }

  // Queues `on_done(WorkList)` behind `works` on the completion thread.
  void run_when_done(std::vector<Work> works, std::vector<py::object> buffers, py::object on_done) {
    // Python objects are touched, and let go, only under the GIL: the state moves into the
    // callback's scope there and dies with it.
    auto state = std::make_shared<std::pair<PyWorkList, py::object>>(
        PyWorkList(works, std::move(buffers)), std::move(on_done));
    WorkCompleter::Job job;
    job.works = std::move(works);
    job.done = [state = std::move(state)](const std::vector<CollectiveResult>&,
                                          std::exception_ptr) mutable {
      py::gil_scoped_acquire gil;
      auto local = std::move(state);
      try {
        local->second(local->first);
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("dlcp completion callback");
      }
      local.reset();
    };
    completer().add(std::move(job));
  }

  WorkCompleter& completer() {
    if (!completer_) completer_ = std::make_unique<WorkCompleter>();
    return *completer_;
  }

  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<WorkCompleter> completer_;
  std::vector<std::pair<Work, std::vector<py::object>>> pending_;
};

void bind_result(py::module_& module) {
  py::class_<CollectiveResult>(module, "CollectiveResult")
      .def_readonly("entries", &CollectiveResult::entries)
      .def_readonly("contributions_expected", &CollectiveResult::contributions_expected)
      .def_readonly("contributions_received", &CollectiveResult::contributions_received)
      .def_readonly("delivered_fraction", &CollectiveResult::delivered_fraction)
      .def_readonly("broadcast_entries_missing", &CollectiveResult::broadcast_entries_missing)
      .def_readonly("seconds", &CollectiveResult::seconds)
      .def_readonly("source", &CollectiveResult::source)
      .def("__repr__", [](const CollectiveResult& r) {
        return "CollectiveResult(entries=" + std::to_string(r.entries) +
               ", delivered_fraction=" + std::to_string(r.delivered_fraction) +
               ", broadcast_entries_missing=" + std::to_string(r.broadcast_entries_missing) +
               ", seconds=" + std::to_string(r.seconds) + ")";
      });
  py::class_<PyWork>(module, "Work")
      .def("ready", &PyWork::ready)
      .def("wait", &PyWork::wait, "Waits; raises the collective's error");
  py::class_<PyWorkList>(module, "WorkList")
      .def("ready", &PyWorkList::ready)
      .def("wait", &PyWorkList::wait,
           "The results in slice order; raises the first failed collective's error");
}

}  // namespace

void bind_communicator(py::module_& module) {
  bind_result(module);
  py::class_<PyCommunicator>(module, "Communicator")
      .def(py::init<Store&, int, int, const CommunicatorOptions&>(), py::arg("store"),
           py::arg("rank"), py::arg("world_size"), py::arg("options"))
      .def_property_readonly("rank", &PyCommunicator::rank)
      .def_property_readonly("size", &PyCommunicator::size)
      .def_property_readonly("is_server", &PyCommunicator::is_server)
      .def("allreduce", &PyCommunicator::allreduce, py::arg("values"), py::arg("options"),
           py::arg("error_feedback") = py::none())
      .def("broadcast", &PyCommunicator::broadcast, py::arg("values"), py::arg("root"),
           py::arg("options"))
      .def("allgather", &PyCommunicator::allgather, py::arg("input"), py::arg("output"),
           py::arg("options"))
      .def("reduce_scatter", &PyCommunicator::reduce_scatter, py::arg("input"), py::arg("output"),
           py::arg("options"), py::arg("error_feedback") = py::none())
      .def("allreduce_slices", &PyCommunicator::allreduce_slices, py::arg("buffer"),
           py::arg("slices"), py::arg("num_layers"), py::arg("options"), py::arg("on_done"),
           py::arg("error_feedback") = py::none())
      .def("when_done", &PyCommunicator::when_done, py::arg("works"), py::arg("on_done"))
      .def("send", &PyCommunicator::send, py::arg("values"), py::arg("peer"), py::arg("tag"),
           py::arg("options"))
      .def("recv", &PyCommunicator::recv, py::arg("values"), py::arg("peer"), py::arg("tag"),
           py::arg("options"))
      .def("recv_any", &PyCommunicator::recv_any, py::arg("values"), py::arg("tag"),
           py::arg("options"))
      .def("barrier", &PyCommunicator::barrier)
      .def("serve", &PyCommunicator::serve)
      .def("counters", &PyCommunicator::counters)
      .def("close", &PyCommunicator::close);
}

}  // namespace dlcp::python
