// React bindings (filled by the React issue).
export {};
