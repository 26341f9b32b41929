console.log('Hello World');
