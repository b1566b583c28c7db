// The communicator over Python buffers (numpy arrays, array.array, memoryviews of float32).
//
// A collective's buffers must stay alive until it is done, even when Python drops the Work
// handle first, so the communicator keeps a reference to every buffer of an unfinished
// collective and lets go once its Work is ready.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core_bindings.hpp"
#include "dlcp/communicator.hpp"
#include "transport_counters.hpp"

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

 private:
  Work work_;
  std::vector<py::object> buffers_;  // alive as long as this handle, too
};

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

  PyWork allreduce(const py::buffer& values, const CollectiveOptions& options) {
    const auto span = float_span(values, true, "allreduce values");
    return track(live().allreduce(span, options), {values});
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

  // Waits for every collective, leaves the job and releases the buffers. Idempotent.
  void close() {
    if (communicator_) {
      py::gil_scoped_release release;
      communicator_.reset();
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

  std::unique_ptr<Communicator> communicator_;
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
      .def("__repr__", [](const CollectiveResult& r) {
        return "CollectiveResult(entries=" + std::to_string(r.entries) +
               ", delivered_fraction=" + std::to_string(r.delivered_fraction) +
               ", broadcast_entries_missing=" + std::to_string(r.broadcast_entries_missing) +
               ", seconds=" + std::to_string(r.seconds) + ")";
      });
  py::class_<PyWork>(module, "Work")
      .def("ready", &PyWork::ready)
      .def("wait", &PyWork::wait, "Waits; raises the collective's error");
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
      .def("allreduce", &PyCommunicator::allreduce, py::arg("values"), py::arg("options"))
      .def("broadcast", &PyCommunicator::broadcast, py::arg("values"), py::arg("root"),
           py::arg("options"))
      .def("allgather", &PyCommunicator::allgather, py::arg("input"), py::arg("output"),
           py::arg("options"))
      .def("barrier", &PyCommunicator::barrier)
      .def("serve", &PyCommunicator::serve)
      .def("counters", &PyCommunicator::counters)
      .def("close", &PyCommunicator::close);
}

}  // namespace dlcp::python
