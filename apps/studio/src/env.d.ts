// Vite bundles the stylesheets a module imports for its side effect (main.tsx: './styles.css').
declare module '*.css';
