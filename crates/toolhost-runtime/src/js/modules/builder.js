// toolhost's `@standardagents/builder`: the utilities the spec's examples import, on top of the
// state a tool is given.

export function queueTool(state, name, args) {
  return state.queueTool(name, args);
}

export function emitThreadEvent(state, type, data) {
  return state.emitThreadEvent(type, data);
}
