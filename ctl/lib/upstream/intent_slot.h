// intent_slot.h - what sluiced's control loop hands the upstream worker: one
// slot holding the latest intent, never a queue. The loop posts the whole
// set of paths it wants now; a post replaces an intent the worker has not
// taken yet, so the slot holds at most one intent whatever the loop does
// while the speaker is slow (nothing grows with the number of changes or of
// sources). The worker takes the newest, waits for one with a timeout (its
// periodic reconcile), and is told to stop. Standard library only; the
// announcer's worker and its unit test share it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

namespace sluice {

template <class Intent>
class IntentSlot {
public:
	struct Taken {
		uint64_t generation = 0; // 1 for the first intent posted, +1 each post
		Intent intent;
		uint64_t replaced = 0;   // intents posted since the last take and never taken
	};

	// The loop: never waits on the worker (the lock is held only to move an
	// intent in or out). Returns the intent's generation.
	uint64_t post(Intent intent)
	{
		uint64_t generation;
		{
			std::lock_guard lock(mu_);
			if (pending_)
				replaced_++;
			pending_ = std::move(intent);
			generation = ++generation_;
		}
		cv_.notify_one();
		return generation;
	}

	// The worker: the newest intent not taken yet, waiting at most `wait`
	// for one; nothing when the wait ends empty or stop() was called.
	template <class Rep, class Period>
	std::optional<Taken> take(std::chrono::duration<Rep, Period> wait)
	{
		std::unique_lock lock(mu_);
		cv_.wait_for(lock, wait, [&] { return pending_.has_value() || stopping_; });
		if (stopping_ || !pending_)
			return std::nullopt;
		Taken t{generation_, std::move(*pending_), replaced_};
		pending_.reset();
		replaced_ = 0;
		return t;
	}

	// The newest intent not taken yet, without waiting (shutdown takes it
	// after the worker is joined).
	std::optional<Intent> take_now()
	{
		std::lock_guard lock(mu_);
		std::optional<Intent> out = std::move(pending_);
		pending_.reset();
		replaced_ = 0;
		return out;
	}

	// Ends every wait at once; take() answers nothing from now on.
	void stop()
	{
		{
			std::lock_guard lock(mu_);
			stopping_ = true;
		}
		cv_.notify_all();
	}
	bool stopping() const
	{
		std::lock_guard lock(mu_);
		return stopping_;
	}
	bool pending() const
	{
		std::lock_guard lock(mu_);
		return pending_.has_value();
	}
	uint64_t generation_seen() const
	{
		std::lock_guard lock(mu_);
		return generation_;
	}

private:
	mutable std::mutex mu_;
	std::condition_variable cv_;
	std::optional<Intent> pending_;
	uint64_t generation_ = 0, replaced_ = 0;
	bool stopping_ = false;
};

// What the worker publishes for readers that must not wait on it: a copy
// under a lock held only for the copy.
template <class Snapshot>
class Published {
public:
	void publish(Snapshot s)
	{
		std::lock_guard lock(mu_);
		value_ = std::move(s);
	}
	Snapshot read() const
	{
		std::lock_guard lock(mu_);
		return value_;
	}
	// Change the published copy in place (the worker's own updates).
	template <class F>
	void update(F &&f)
	{
		std::lock_guard lock(mu_);
		f(value_);
	}

private:
	mutable std::mutex mu_;
	Snapshot value_{};
};

} // namespace sluice
