// Unit tests of the stack model's asyncio side: a coroutine's resumptions continue its call,
// each task's frames nest under it, and its time splits into waiting to start, running and
// awaiting, by what it awaited.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/stack_model.hpp"

using namespace pyust::analysis;

namespace {

constexpr ThreadKey loop_thread{100, 100};
constexpr std::uint64_t run_id = 1, main_id = 2, worker_id = 3, fetch_id = 4, sleep_id = 5,
                        parse_id = 6, create_id = 7;
constexpr std::uint64_t task_a = 0xa000, task_b = 0xb000;

// The loop's Handle._run calls a task's root; times advance by 10 ns per event.
struct Loop {
    StackModel model;
    Timestamp now = 0;

    Loop()
    {
        model.on_code(run_id, "asyncio.events", "Handle._run", "events.py", 78);
        model.on_code(main_id, "__main__", "main", "app.py", 20);
        model.on_code(worker_id, "__main__", "worker", "app.py", 13);
        model.on_code(fetch_id, "__main__", "fetch", "app.py", 8);
        model.on_code(sleep_id, "asyncio.tasks", "sleep", "tasks.py", 627);
        model.on_code(parse_id, "__main__", "parse", "app.py", 4);
        model.on_code(create_id, "asyncio.base_events", "BaseEventLoop.create_task", "b.py", 429);
    }
    Thread& at(Timestamp step = 10) { return model.thread_at(loop_thread, now += step, 0); }
    void call(std::uint64_t id) { model.on_call(at(), id); }
    void ret(std::uint64_t id) { model.on_return(at(), id); }
    void calls(std::initializer_list<std::uint64_t> ids)
    {
        for (const std::uint64_t id : ids)
            call(id);
    }
    void rets(std::initializer_list<std::uint64_t> ids)
    {
        for (const std::uint64_t id : ids)
            ret(id);
    }
    void step(std::uint64_t key, std::uint32_t resumed, std::uint8_t awaited = 0,
              Timestamp after = 10, std::uint8_t thrown = 0)
    {
        call(run_id);
        model.on_task_step(at(after), key, resumed, awaited, 0, thrown);
    }
    const Thread& thread() { return *model.threads().at(0); }
    std::uint64_t calls_of(std::uint64_t id) const
    {
        return model.functions().at(FrameId{id, false}).calls;
    }
    // "label calls" per node below a node of nodes, depth-first, two spaces per level.
    std::vector<std::string> tree(const std::vector<ContextNode>& nodes, std::uint32_t top) const
    {
        std::vector<std::string> out;
        walk(nodes, top, 0, out);
        return out;
    }
    void walk(const std::vector<ContextNode>& nodes, std::uint32_t index, int level,
              std::vector<std::string>& out) const
    {
        for (const std::uint32_t child : nodes[index].children) {
            out.push_back(std::string(2 * level, ' ') + model.label(nodes[child].id) + ' ' +
                          std::to_string(nodes[child].calls) +
                          (nodes[child].is_task_root ? " (task root)" : ""));
            walk(nodes, child, level + 1, out);
        }
    }
    // One worker step: n resumed frames of worker > fetch > sleep, sleep returns for good
    // then fetch, parse, fetch again, sleep again, suspended.
    void worker_step(std::uint64_t key, bool is_first)
    {
        step(key, is_first ? 0 : 3, is_first ? 0 : 2, 1000);
        calls({worker_id, fetch_id, sleep_id});
        if (!is_first) {
            ret(sleep_id);
            call(parse_id);
            rets({parse_id, fetch_id});
            calls({fetch_id, sleep_id});
        }
        rets({sleep_id, fetch_id, worker_id, run_id});
    }
};

} // namespace

TEST_CASE("an exception thrown into a task resumes its chain innermost first, in one step")
{
    // worker > fetch > sleep suspended; a cancellation resumes sleep, which raises, then fetch
    // (thrown 2: the same step), which catches it, calls parse and sleeps again; the next step
    // resumes worker, fetch and sleep, which return for good.
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "worker a");
    loop.worker_step(task_a, true);
    loop.step(task_a, 3, 2, 1000, 1);
    loop.call(sleep_id);
    loop.rets({sleep_id, run_id});
    loop.step(task_a, 2, 2, 10, 2);
    loop.calls({fetch_id, parse_id});
    loop.ret(parse_id);
    loop.call(sleep_id);
    loop.rets({sleep_id, fetch_id, run_id});
    loop.step(task_a, 3, 2, 1000);
    loop.calls({worker_id, fetch_id, sleep_id});
    loop.rets({sleep_id, fetch_id, worker_id});
    loop.model.on_task_end(loop.at(), task_a, 2);
    loop.ret(run_id);
    loop.model.finish();
    CHECK(loop.calls_of(worker_id) == 1);
    CHECK(loop.calls_of(fetch_id) == 1);
    CHECK(loop.calls_of(sleep_id) == 2);
    CHECK(loop.calls_of(parse_id) == 1);
    REQUIRE(loop.model.tasks().size() == 1);
    const Task& task = loop.model.tasks()[0];
    CHECK(task.steps == 3);
    CHECK(task.ended == TaskEnd::cancelled);
    CHECK(loop.tree(loop.model.task_nodes(), task.root) == std::vector<std::string>{
                                                               "__main__:worker 1",
                                                               "  __main__:fetch 1",
                                                               "    asyncio.tasks:sleep 2",
                                                               "    __main__:parse 1",
                                                           });
    // Two awaits of sleep: the one the cancellation ended, and the last.
    CHECK(task.awaits[static_cast<std::size_t>(AwaitKind::sleep)] == 2);
}

TEST_CASE("a coroutine's resumptions continue its call: one call, its steps' time")
{
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "worker a");
    loop.worker_step(task_a, true);
    loop.worker_step(task_a, false);
    loop.worker_step(task_a, false);
    // The last step: sleep returns, fetch and worker return for good.
    loop.step(task_a, 3, 2, 1000);
    loop.calls({worker_id, fetch_id, sleep_id});
    loop.rets({sleep_id, fetch_id, worker_id});
    loop.model.on_task_end(loop.at(), task_a, 0);
    loop.ret(run_id);
    loop.model.finish();
    CHECK(loop.calls_of(worker_id) == 1);
    CHECK(loop.calls_of(fetch_id) == 3);
    CHECK(loop.calls_of(sleep_id) == 3);
    CHECK(loop.calls_of(parse_id) == 2);
    CHECK(loop.calls_of(run_id) == 4);
    CHECK(loop.tree(loop.thread().nodes(), 0) == std::vector<std::string>{
                                                     "asyncio.events:Handle._run 4",
                                                     "  __main__:worker 1 (task root)",
                                                     "    __main__:fetch 3",
                                                     "      asyncio.tasks:sleep 3",
                                                     "      __main__:parse 2",
                                                 });
    REQUIRE(loop.model.tasks().size() == 1);
    const Task& task = loop.model.tasks()[0];
    CHECK(task.name == "worker a");
    CHECK(task.creator == no_task);
    CHECK(task.ended == TaskEnd::returned);
    CHECK(task.steps == 4);
    CHECK(loop.tree(loop.model.task_nodes(), task.root) == std::vector<std::string>{
                                                               "__main__:worker 1",
                                                               "  __main__:fetch 3",
                                                               "    asyncio.tasks:sleep 3",
                                                               "    __main__:parse 2",
                                                           });
    // Three awaits of sleep's future, each from a step's end to the next step (1,000 ns after
    // Handle._run's call); it waited 1,000 ns for its first step; wall = the three parts.
    CHECK(task.awaits[static_cast<int>(AwaitKind::sleep)] == 3);
    CHECK(task.await_ns[static_cast<int>(AwaitKind::sleep)] == 3 * (10 + 10 + 1000));
    CHECK(task.scheduled_ns == 10 + 1000);
    CHECK(task.running_ns == 60 + 2 * 120 + 60);
    CHECK(task.wall_ns == task.scheduled_ns + task.running_ns + task.awaiting_ns());
    CHECK(task.wall_ns == task.end - task.created);
}

TEST_CASE("what a step does not resume had returned for good; a new call is a call")
{
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "a");
    loop.step(task_a, 0);
    loop.calls({worker_id, fetch_id, parse_id});
    // parse returns, then fetch yields: the cascade holds parse, fetch and worker.
    loop.rets({parse_id, fetch_id, worker_id, run_id});
    // Only worker and fetch resume; then fetch calls parse anew.
    loop.step(task_a, 2, 1);
    loop.calls({worker_id, fetch_id, parse_id});
    loop.rets({parse_id, fetch_id, worker_id});
    loop.model.on_task_end(loop.at(), task_a, 1);
    loop.ret(run_id);
    loop.model.finish();
    CHECK(loop.calls_of(parse_id) == 2);
    CHECK(loop.calls_of(fetch_id) == 1);
    CHECK(loop.calls_of(worker_id) == 1);
    const Task& task = loop.model.tasks()[0];
    CHECK(task.ended == TaskEnd::raised);
    CHECK(task.awaits[static_cast<int>(AwaitKind::yield)] == 1);
}

TEST_CASE("a task created in a step is its creator's, where the step's frames are")
{
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "Task-1");
    loop.step(task_a, 0);
    loop.calls({main_id, create_id});
    loop.ret(create_id);
    loop.model.on_task(loop.at(), task_b, task_a, "Task-2");
    loop.model.on_task(loop.at(), task_b, task_a, "renamed"); // asyncio.create_task's name
    loop.rets({main_id, run_id});
    loop.worker_step(task_b, true);
    loop.model.on_task_end(loop.at(), task_b, 2);
    loop.step(task_a, 1, 3);
    loop.call(main_id);
    loop.ret(main_id);
    loop.model.on_task_end(loop.at(), task_a, 0);
    loop.ret(run_id);
    loop.model.finish();
    const auto& tasks = loop.model.tasks();
    REQUIRE(tasks.size() == 2);
    CHECK(tasks[1].name == "renamed");
    CHECK(tasks[1].creator == 0);
    CHECK(tasks[1].is_created_in_task);
    CHECK(loop.model.label(loop.model.task_nodes()[tasks[1].created_at].id) == "__main__:main");
    CHECK(tasks[1].ended == TaskEnd::cancelled);
    CHECK(tasks[0].awaits[static_cast<int>(AwaitKind::task)] == 1);
    CHECK(loop.calls_of(main_id) == 1);
}

TEST_CASE("an eager task's first step inside its creator's: each task its own running time")
{
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "main");
    loop.step(task_a, 0);
    loop.calls({main_id, create_id});
    // The eager first step runs inside create_task, before python:task names the task.
    loop.model.on_task_step(loop.at(), task_b, 0, 0, 0);
    loop.call(worker_id);
    loop.ret(worker_id);
    loop.model.on_task_end(loop.at(), task_b, 0);
    loop.ret(create_id);
    loop.model.on_task(loop.at(), task_b, task_a, "eager");
    loop.rets({main_id, run_id});
    loop.model.finish();
    const auto& tasks = loop.model.tasks();
    REQUIRE(tasks.size() == 2);
    CHECK(tasks[1].name == "eager");
    CHECK(tasks[1].creator == 0);
    CHECK(tasks[1].ended == TaskEnd::returned);
    CHECK(tasks[1].running_ns == 20);
    // main's step: from the step to main's return, less the eager step's 20 ns.
    CHECK(tasks[0].running_ns == 90 - 20);
    CHECK(loop.tree(loop.model.task_nodes(), tasks[0].root) ==
          std::vector<std::string>{"__main__:main 1",
                                   "  asyncio.base_events:BaseEventLoop.create_task 1"});
    CHECK(loop.tree(loop.model.task_nodes(), tasks[1].root) ==
          std::vector<std::string>{"__main__:worker 1"});
}

TEST_CASE("hidden calls resume hidden frames; a hidden root's return is shown, not a nested one")
{
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "a");
    Thread& thread = loop.at();
    loop.model.on_task_step(thread, task_a, 0, 0, 0);
    CHECK(StackModel::is_task_root_call(thread));
    loop.call(worker_id); // shown although hidden: the root
    CHECK_FALSE(StackModel::is_task_root_call(thread));
    loop.model.on_hidden_call(loop.at(), worker_id); // a hidden recursive call of its code
    CHECK_FALSE(loop.model.is_task_root_return(loop.at(), worker_id)); // its return
    loop.call(fetch_id);
    loop.model.on_hidden_call(loop.at(), sleep_id);
    loop.ret(fetch_id);
    CHECK(loop.model.is_task_root_return(loop.at(), worker_id));
    loop.ret(worker_id);
    // Three frames resumed, sleep's hidden: fetch is still the same call.
    loop.model.on_task_step(loop.at(), task_a, 3, 2, 0);
    loop.call(worker_id);
    loop.call(fetch_id);
    loop.model.on_hidden_call(loop.at(), sleep_id);
    loop.call(parse_id);
    loop.rets({parse_id, fetch_id, worker_id});
    loop.model.on_task_end(loop.at(), task_a, 0);
    loop.model.finish();
    CHECK(loop.calls_of(fetch_id) == 1);
    CHECK(loop.calls_of(worker_id) == 1);
    CHECK(loop.calls_of(parse_id) == 1);
    // sleep's frame is hidden: the await reads a future.
    CHECK(loop.model.tasks()[0].awaits[static_cast<int>(AwaitKind::future)] == 1);
}

TEST_CASE("a task suspended at the end awaits until then; a key names a new task once ended")
{
    Loop loop;
    loop.model.on_task(loop.at(), task_a, 0, "first");
    loop.worker_step(task_a, true);
    loop.model.on_task_end(loop.at(), task_a, 0);
    loop.model.on_task(loop.at(), task_a, 0, "second"); // the key again: another task
    loop.worker_step(task_a, true);
    loop.model.on_task_step(loop.at(), 0xc000, 0, 0, 0); // a coroutine no python:task named
    loop.call(fetch_id);
    loop.ret(fetch_id);
    loop.at(500);
    loop.model.finish();
    const auto& tasks = loop.model.tasks();
    REQUIRE(tasks.size() == 3);
    CHECK(tasks[0].name == "first");
    CHECK(tasks[1].name == "second");
    CHECK(tasks[1].ended == TaskEnd::open);
    CHECK(tasks[1].awaits[static_cast<int>(AwaitKind::unknown)] == 1);
    CHECK(tasks[1].end == loop.now);
    CHECK(tasks[2].name.empty());
    CHECK(loop.calls_of(worker_id) == 2);
    CHECK(loop.calls_of(fetch_id) == 3);
    CHECK(loop.thread().gaps().empty());
}
