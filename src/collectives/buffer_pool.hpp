// Scratch buffers reused across collectives, so steady-state collectives allocate no buffer
// memory: a lease takes the smallest free buffer that is large enough (or grows the pool) and
// gives it back when it ends.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace dlcp::collectives {

template <class T>
class BufferPool {
 public:
  class Lease {
   public:
    Lease() = default;
    Lease(BufferPool* pool, std::unique_ptr<std::vector<T>> buffer, std::size_t size)
        : pool_(pool), buffer_(std::move(buffer)), size_(size) {}
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&& other) noexcept {
      release();
      pool_ = other.pool_;
      buffer_ = std::move(other.buffer_);
      size_ = other.size_;
      return *this;
    }
    ~Lease() { release(); }

    std::span<T> span() const { return {buffer_->data(), size_}; }

   private:
    void release() {
      if (pool_ != nullptr && buffer_) pool_->give_back(std::move(buffer_));
    }
    BufferPool* pool_ = nullptr;
    std::unique_ptr<std::vector<T>> buffer_;
    std::size_t size_ = 0;
  };

  Lease acquire(std::size_t size) {
    std::unique_ptr<std::vector<T>> buffer;
    {
      std::lock_guard lock(mutex_);
      std::size_t best = free_.size();
      for (std::size_t i = 0; i < free_.size(); ++i) {
        if (free_[i]->size() >= size &&
            (best == free_.size() || free_[i]->size() < free_[best]->size())) {
          best = i;
        }
      }
      if (best != free_.size()) {
        buffer = std::move(free_[best]);
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
      }
    }
    if (!buffer) buffer = std::make_unique<std::vector<T>>(size);
    return Lease(this, std::move(buffer), size);
  }

 private:
  void give_back(std::unique_ptr<std::vector<T>> buffer) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(buffer));
  }

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::vector<T>>> free_;
};

}  // namespace dlcp::collectives
