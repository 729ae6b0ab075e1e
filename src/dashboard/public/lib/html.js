// Preact with hooks and htm, from the `htm` package's standalone build: one
// ES module with no imports of its own, so the browser loads it as it is
// (no bundler, no import map, which a strict CSP would refuse inline).
// Every page imports the framework from here and nowhere else.
export { html, render, h, createContext, useState, useReducer, useEffect, useLayoutEffect, useRef, useMemo, useCallback, useContext } from '/dashboard/vendor/preact.js';
