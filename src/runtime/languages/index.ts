// Source-language tooling the policy's static checks and the adapters both read: parsers and scanners, no policy.
export { parseJavaScript, type JavaScriptNode } from './javascript'
export { loadTypeScript, parseTypeScript } from './typescript'
export { scanPython, type PythonScan, type PythonLocation } from './python-scan'
