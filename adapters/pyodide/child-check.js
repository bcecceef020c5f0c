'use strict'
/**
 * The Python of the check after each pyodide run (child.js runs it before child-python.js): that no module in
 * sys.modules and no builtin was replaced or changed, so a run that changed one gets its process replaced. Plain
 * JavaScript, read by the child under the permission model (process-pool.ts lets it read this file).
 */
module.exports = `
def _execgate_check():
    import sys, builtins, linecache, operator, itertools, gc

    # Taken after everything above exists, and kept in this closure rather than in a module a run could edit.
    # __main__ is left out: the runs get their own globals, and our names there are removed before the first run.
    modules = dict(sys.modules)
    # A module's __dict__ cannot be replaced (a read-only attribute), so the dicts themselves are what to compare; the
    # comparison (unchanged(), below) runs in C over some 11,000 names, where a loop in Python took ~1 ms.
    watched = [vars(m) for name, m in modules.items() if m is not None and hasattr(m, '__dict__') and name != '__main__']
    watched.append(vars(builtins))
    # The interpreter records the last exception in sys (sys.last_exc and the older three): set back after each run, so
    # no run reads the one before's error, rather than compared.
    last_names = ('last_exc', 'last_type', 'last_value', 'last_traceback')
    sys_names = vars(sys)
    last_state = {name: sys_names[name] for name in last_names if name in sys_names}
    snapshot = [dict(names) for names in watched]
    module_count = len(modules)
    # Compared by identity, never with == alone: a replacement whose class says it equals anything (__eq__ returning
    # True) passes an equality check. gc.get_referents of the dicts lists their values (and any key that is not an
    # exact str) in one call into C; those must be the snapshot's objects, in order (operator.is_ over them, in C).
    # Then every key is an exact str and every value the same object, so the dicts' == (keys, sizes) calls no code of
    # the run's. The builtins the check uses are taken now: a run that replaces them cannot answer for it.
    identical, repeat, values_of, referents = operator.is_, itertools.repeat, dict.values, gc.get_referents
    same_all, each, count_of, as_list, type_of, paired = all, map, len, list, type, zip
    snapshot_objects = referents(*watched)

    def unchanged():
        objects = referents(*watched)
        if count_of(objects) == count_of(snapshot_objects) and same_all(each(identical, objects, snapshot_objects)):
            return watched == snapshot
        # Not the same objects: allowed only as equal plain values under the same names (below), and only when every
        # key is an exact str (another key's __eq__ would run the run's code from inside the lookups).
        if not same_all(each(only_str_keys, watched)):
            return False
        for names, before in paired(watched, snapshot):
            if count_of(names) != count_of(before):
                return False
            for key, old in before.items():
                new = names.get(key, missing)
                if new is old:
                    continue
                kind = type_of(old)
                if kind not in plain or type_of(new) is not kind or new != old:
                    return False
        return True

    def only_str_keys(names):
        return same_all(each(identical, each(type_of, names), repeat(str)))

    # Values of these exact types compare by content when not the same object (a module rebinding a counter or a
    # string to an equal one changed nothing); their == cannot be redefined by a run.
    plain = frozenset({int, float, complex, str, bytes, bool, type(None)})
    missing = object()
    # sys.modules and linecache's cache as they are now: a run that rebinds either changes a watched value.
    sys_modules, line_cache = sys.modules, linecache.cache
    module_names, module_objects = as_list(modules), as_list(values_of(modules))

    def modules_kept():
        names, objects = as_list(sys_modules), as_list(values_of(sys_modules))
        return (
            count_of(names) >= module_count
            and same_all(each(identical, names, module_names))
            and same_all(each(identical, objects, module_objects))
        )

    # What exists now is never collected again (gc.freeze), so the collection after each run looks only at what was
    # made since: the run's leftovers, not the ~20,000 the interpreter and its modules hold.
    collect = gc.collect
    gc.freeze()

    def tidy():
        # True when the run already failed. Nothing here may call the run's code before the verdict: a key of another
        # type than str in a dict we look into would (its __eq__), so each such dict's keys are checked first, in C.
        # The run's leftovers go before the comparison (its error, its source, the modules it imported first, then a
        # collection), so a finalizer (__del__, a weakref callback) they hold runs now and is judged, rather than
        # during the next run.
        if not only_str_keys(sys_names):
            return True
        for name in last_names:
            if name in last_state:
                sys_names[name] = last_state[name]
            else:
                sys_names.pop(name, None)
        # The run's source stays out of the next run's tracebacks (and out of its reach through linecache).
        if not only_str_keys(line_cache):
            return True
        line_cache.pop('main.py', None)
        # The snapshot's modules stay first in sys.modules, the same objects in the same order; any after them are the
        # run's, dropped so the next run imports them fresh.
        if not modules_kept():
            return True
        names_now = as_list(sys_modules)
        if not only_str_keys(names_now):
            return True
        for name in names_now[module_count:]:
            del sys_modules[name]
        collect()
        return count_of(sys_modules) != module_count or not modules_kept()

    # For the comparison of the dicts' memory (child-memory-check.js), which answers "unchanged" for most runs in a
    # fraction of unchanged()'s time and defers to it otherwise. Called once, at start: each watched dict's address,
    # size, and the addresses of its keys and values, by which that comparison proves it reads this build's layout.
    address, as_dict, freeze = id, dict, gc.freeze

    def layout():
        return [
            [address(names), count_of(names), as_list(each(address, names)), as_list(each(address, values_of(names)))]
            for names in watched
        ]

    # What the dicts hold now, kept alive while the memory comparison compares against it (it takes the dicts' memory
    # again after unchanged() accepted a change): an address it keeps then always means the same object, as the
    # snapshot's do (a freed object's address could be reused by a replacement). Frozen, like the snapshot, so that
    # gc.get_referrers does not hand these copies to a run.
    held = []

    def hold():
        held[:] = as_list(each(as_dict, watched))
        freeze()

    return tidy, unchanged, layout, hold

`
